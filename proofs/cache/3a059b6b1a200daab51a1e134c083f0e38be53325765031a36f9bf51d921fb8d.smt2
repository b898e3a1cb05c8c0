(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun E_ () (_ BitVec 16))
(declare-fun GA_ () Bool)
(declare-fun GAp_ () Bool)
(declare-fun GP_ () (_ BitVec 15))
(declare-fun GPp_ () (_ BitVec 15))
(declare-fun GZ_ () Bool)
(declare-fun GZp_ () Bool)
(declare-fun x0 () (_ BitVec 8))
(declare-fun x1 () (_ BitVec 8))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x0))) false)))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x1))) false)))
(assert
 (bvslt GP_ (_ bv4096 15)))
(assert
 (bvsgt GP_ (_ bv28672 15)))
(assert
 (let (($x50 (= GP_ (_ bv0 15))))
 (=> GZ_ $x50)))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x0))) false)))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x1))) false)))
(assert
 (bvslt GPp_ (_ bv4096 15)))
(assert
 (bvsgt GPp_ (_ bv28672 15)))
(assert
 (let (($x62 (= GPp_ (_ bv0 15))))
 (=> GZp_ $x62)))
(assert
 (let (($x66 (bvsle GP_ GPp_)))
 (and $x66 (=> (and GZ_ (not GZp_)) (and (distinct GPp_ (_ bv0 15)) true)) (=> (and GZp_ (not GZ_)) (and (distinct GP_ (_ bv0 15)) true)))))
(assert
 (let (($x84 (bvsle E_ (_ bv254 16))))
 (and (bvsge E_ (_ bv65397 16)) $x84)))
(assert
 (let ((?x96 (bvadd ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x0))) (_ bv127 11))) ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x1))) (_ bv127 11))))))
 (let ((?x97 ((_ sign_extend 3) ?x96)))
 (bvsle (ite (or (or GZ_ false) false) (_ bv65397 16) ?x97) E_))))
(assert
 (let ((?x96 (bvadd ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x0))) (_ bv127 11))) ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x1))) (_ bv127 11))))))
 (let ((?x97 ((_ sign_extend 3) ?x96)))
 (bvsle (ite (or (or GZp_ false) false) (_ bv65397 16) ?x97) E_))))
(assert
 (let ((?x96 (bvadd ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x0))) (_ bv127 11))) ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x1))) (_ bv127 11))))))
(let ((?x97 ((_ sign_extend 3) ?x96)))
(let ((?x145 (bvsub E_ ?x97)))
(let ((?x149 ((_ zero_extend 35) (bvadd (ite (bvsgt (_ bv0 16) ?x145) (_ bv0 16) ?x145) (_ bv0 16)))))
(let ((?x152 (ite (bvugt ?x149 (_ bv51 51)) (_ bv51 51) ?x149)))
(let ((?x138 ((_ zero_extend 17) (ite true (_ bv1 1) (_ bv0 1)))))
(let ((?x139 (bvmul ?x138 ?x138)))
(let ((?x167 (bvmul ((_ zero_extend 3) (ite (bvslt GPp_ (_ bv0 15)) (bvneg GPp_) GPp_)) ?x139)))
(let ((?x171 ((_ zero_extend 5) (bvlshr (bvshl ((_ zero_extend 33) ?x167) (_ bv33 51)) ?x152))))
(let (($x160 (ite (= (_ bv0 15) GPp_) GAp_ (bvsgt (_ bv0 15) GPp_))))
(let (($x161 (ite false true $x160)))
(let ((?x141 ((_ zero_extend 33) (bvmul ((_ zero_extend 3) (ite (bvslt GP_ (_ bv0 15)) (bvneg GP_) GP_)) ?x139))))
(let ((?x154 ((_ zero_extend 5) (bvlshr (bvshl ?x141 (_ bv33 51)) ?x152))))
(let (($x128 (ite (= (_ bv0 15) GP_) GA_ (bvsgt (_ bv0 15) GP_))))
(let (($x129 (ite false true $x128)))
(let (($x174 (bvsle (ite (ite false false $x129) (bvsub (_ bv0 56) ?x154) ?x154) (ite (ite false false $x161) (bvsub (_ bv0 56) ?x171) ?x171))))
(not $x174))))))))))))))))))
(check-sat)
